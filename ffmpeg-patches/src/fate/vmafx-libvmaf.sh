vmafx_libvmaf(){
    # vmafx and libvmaf on the same generated frames: their CSV logs must be
    # identical (vmafx equals libvmaf 3.2.0 bit for bit); the log is the output.
    vmafx_log="${outdir}/${test}.vmafx.csv"
    libvmaf_log="${outdir}/${test}.libvmaf.csv"
    cleanfiles="$cleanfiles $vmafx_log $libvmaf_log"
    graph="testsrc2=size=320x240:rate=25:duration=0.4,format=yuv420p,split[ref][tmp];[tmp]gblur=sigma=2[dist];[dist][ref]"
    opts="feature=name=psnr:log_fmt=csv:log_path"
    ffmpeg -lavfi "${graph}vmafx=${opts}=$(target_path $vmafx_log)" -f null /dev/null || return
    ffmpeg -lavfi "${graph}libvmaf=${opts}=$(target_path $libvmaf_log)" -f null /dev/null || return
    cmp -s $vmafx_log $libvmaf_log || { echo "vmafx and libvmaf logs differ:"; diff $libvmaf_log $vmafx_log; return 1; }
    cat $vmafx_log
}

